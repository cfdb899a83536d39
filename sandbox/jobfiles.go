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

	"github.com/skillgate/skillgate/internal/runerror"
	"github.com/skillgate/skillgate/sandbox/internal/wire"
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
		base := path.Join(wire.SkillsDir, s.Name)
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
		if err := mkdirAllRoot(root, wire.InputBlobsDir); err != nil {
			return err
		}
	}
	for _, b := range p.job.InputBlobs {
		if err := writeRootFile(root, path.Join(wire.InputBlobsDir, inputBlobFile(b.ID)), b.Data); err != nil {
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

// collectOutputs collects the blobs a run wrote from its workspace. Every
// process of the run is dead by now, so nothing changes under the reads.
// All files are opened and measured first: a symlink, a non-regular file,
// a file over perBlob, or files over total together fail the run before
// a byte is read, so a sparse file costs nothing to refuse. Each blob then
// goes to sink, streamed from its file, or without a sink is read into
// memory.
func collectOutputs(ws *os.Root, recs []blobRecord, ids []string, perBlob, total int64, sink OutputSink) ([]OutputBlob, error) {
	files := make([]*os.File, 0, len(recs))
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	out := make([]OutputBlob, 0, len(recs))
	var sum int64
	for i, rec := range recs {
		f, size, err := openRegular(ws, path.Join(outputBlobsDir, strconv.Itoa(i)), perBlob)
		if err != nil {
			return nil, fmt.Errorf("output blob %d: %w", i, err)
		}
		files = append(files, f)
		out = append(out, OutputBlob{ID: ids[i], Kind: rec.Kind, Size: size})
		sum += size
	}
	if total > 0 && sum > total {
		return nil, &RunError{Type: runerror.OutputTooLarge, Message: fmt.Sprintf(
			"the run's %d output blobs hold %d bytes together, more than the %d bytes a run may write; nothing was read or kept",
			len(out), sum, total)}
	}
	for i := range out {
		r := io.LimitReader(files[i], out[i].Size)
		if sink != nil {
			if err := sink.Output(out[i], r); err != nil {
				return nil, err
			}
			continue
		}
		data := make([]byte, out[i].Size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("output blob %d: %w", i, err)
		}
		out[i].Data = data
	}
	return out, nil
}

// openRegular opens a regular file of the workspace that is at most limit
// bytes long and returns it with its size.
func openRegular(root *os.Root, name string, limit int64) (*os.File, int64, error) {
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, 0, err
	}
	if !lst.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", name, lst.Mode().Type())
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !os.SameFile(lst, st) || !st.Mode().IsRegular():
		err = fmt.Errorf("%s changed while being read", name)
	case st.Size() > limit:
		err = fmt.Errorf("%d bytes exceed the limit of %d", st.Size(), limit)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}
