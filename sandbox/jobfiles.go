package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"
)

// writeJobFiles stores the run's skills and input blobs in its job
// directory (bound read-only at /job; run_code's source travels in the job
// message). Paths were validated; os.Root keeps a bad one inside anyway.
// Modes are set explicitly so that the host's umask cannot hide the files
// from the sandbox user.
func writeJobFiles(dir string, p *plan) error {
	if len(p.job.Skills) == 0 && len(p.job.InputBlobs) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, s := range p.job.Skills {
		base := path.Join(skillsDir, s.Name)
		for _, f := range s.Files {
			name := path.Join(base, f.Path)
			if err := mkdirAllRoot(root, path.Dir(name)); err != nil {
				return err
			}
			if err := writeRootFile(root, name, f.Data); err != nil {
				return err
			}
		}
	}
	if len(p.job.InputBlobs) > 0 {
		if err := mkdirAllRoot(root, inputBlobsDir); err != nil {
			return err
		}
	}
	for _, b := range p.job.InputBlobs {
		if err := writeRootFile(root, path.Join(inputBlobsDir, inputBlobFile(b.ID)), b.Data); err != nil {
			return err
		}
	}
	return nil
}

func mkdirAllRoot(root *os.Root, dir string) error {
	if dir == "." {
		return nil
	}
	if err := mkdirAllRoot(root, path.Dir(dir)); err != nil {
		return err
	}
	err := root.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job dir: %w", err)
	}
	return root.Chmod(dir, 0o755)
}

func writeRootFile(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("job dir: %w", err)
	}
	_, err = f.Write(data)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err != nil {
		return fmt.Errorf("job dir: %w", err)
	}
	return nil
}

// readOutputBlobs reads the blobs a run wrote from its workspace. Every
// process of the run is dead by now, so nothing changes under the reads;
// a symlink, a non-regular file or an oversized file fails the run.
func readOutputBlobs(ws *os.Root, recs []blobRecord, ids []string, limit int64) ([]OutputBlob, error) {
	var out []OutputBlob
	for i, rec := range recs {
		name := path.Join(outputBlobsDir, strconv.Itoa(i))
		data, err := readRegular(ws, name, limit)
		if err != nil {
			return nil, fmt.Errorf("output blob %d: %w", i, err)
		}
		out = append(out, OutputBlob{ID: ids[i], Kind: rec.Kind, Data: data})
	}
	return out, nil
}

func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !lst.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, lst.Mode().Type())
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(lst, st) || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s changed while being read", name)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes exceed the limit of %d", st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("more than %d bytes", limit)
	}
	return data, err
}
