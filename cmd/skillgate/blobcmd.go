package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

// blobPiece is the bytes of one read_blob or upload_chunk call of the
// blob commands (the gateway may give less). It is fixed, rather than the
// max_chunk_bytes of begin_upload, so that a resumed put cuts the file
// where the first one did: the gateway accepts a chunk re-sent at the
// offset and with the bytes of one it holds. Its base64 fits the default
// 1 MiB message.
const blobPiece = 512 << 10

// maxReconnects bounds how often one put or get reconnects after losing
// its connection (a replica draining, a balancer cutting it).
const maxReconnects = 5

func newBlobCommand() *cobra.Command {
	o := &callOptions{}
	cmd := &cobra.Command{
		Use:   "blob",
		Short: "Upload and download blobs of any size over the framed transport",
		Long: "put uploads a file in chunks (begin_upload, upload_chunk, finish_upload) and prints the blob's\n" +
			"create_blob result; get downloads a blob by range (read_blob mode \"range\"). Both check the\n" +
			"SHA-256, reconnect when the connection is lost, and show a progress bar on stderr when it is a\n" +
			"terminal. An error response exits 1, a connection or file failure 2.",
	}
	o.addFlags(cmd)
	var kind, resume string
	put := &cobra.Command{
		Use: "put FILE", Short: "Upload FILE as a blob and print its id, size, kind and sha256", Args: cobra.ExactArgs(1),
		Example: "  skillgate blob put --kind application/zip data.zip\n" +
			"  skillgate blob put --resume upload:6f1c… data.zip   # continue a cut upload",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.blobPut(cmd, args[0], kind, resume)
		},
	}
	put.Flags().StringVar(&kind, "kind", "application/octet-stream", "the blob's MIME type")
	put.Flags().StringVar(&resume, "resume", "", "continue the upload of this id (printed on stderr when an upload begins)")
	get := &cobra.Command{
		Use: "get BLOB_ID FILE", Short: "Download a blob into FILE", Args: cobra.ExactArgs(2),
		Long: "Download a blob into FILE. The bytes go to FILE.part first, which becomes FILE once the\n" +
			"SHA-256 matches; a FILE.part left by a cut download is continued.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.blobGet(cmd, args[0], args[1])
		},
	}
	cmd.AddCommand(put, get)
	return cmd
}

// blobConn is a connection of a blob command that reconnects when it is
// lost; an error response is no reason to.
type blobConn struct {
	o      *callOptions
	cmd    *cobra.Command
	ctx    context.Context // ends after --timeout
	cancel context.CancelFunc
	conn   *session.Conn
	spent  int // reconnects
}

func (o *callOptions) blobConn(cmd *cobra.Command) (*blobConn, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	c := &blobConn{o: o, cmd: cmd, ctx: ctx, cancel: cancel}
	conn, err := o.connect(cmd, ctx, session.ClientConfig(), true)
	if err != nil {
		cancel()
		return nil, err
	}
	c.conn = conn
	return c, nil
}

func (c *blobConn) close() {
	_ = c.conn.Close()
	c.cancel()
}

// call makes a call, reconnecting and calling again when the connection
// was lost. Every call of the blob commands may be repeated safely.
func (c *blobConn) call(method string, params, out any) error {
	for {
		res, err := c.conn.Call(c.ctx, method, params)
		var te *transport.Error
		if err == nil {
			return json.Unmarshal(res, out)
		}
		if errors.As(err, &te) && te.StringCode != transport.StringServerShutdown || c.ctx.Err() != nil || c.spent >= maxReconnects {
			return printCallError(c.cmd, method, err)
		}
		c.spent++
		_ = c.conn.Close()
		conn, cerr := c.o.connect(c.cmd, c.ctx, session.ClientConfig(), true)
		if cerr != nil {
			return cerr
		}
		c.conn = conn
	}
}

type uploadBegun struct {
	UploadID string `json:"upload_id"`
	MaxChunk int64  `json:"max_chunk_bytes"`
}

func (o *callOptions) blobPut(cmd *cobra.Command, path, kind, resume string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	c, err := o.blobConn(cmd)
	if err != nil {
		return err
	}
	defer c.close()
	up := uploadBegun{UploadID: resume, MaxChunk: blobPiece}
	if resume == "" {
		if err := c.call(dispatch.MethodBeginUpload, map[string]any{"kind": kind, "size_bytes": st.Size()}, &up); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "upload %s begun; if it is cut, continue it with --resume %s\n", up.UploadID, up.UploadID)
	}
	sum := sha256.New()
	bar := newProgress(cmd.ErrOrStderr(), st.Size())
	if err := sendChunks(c, f, up, st.Size(), sum, bar); err != nil {
		return err
	}
	bar.done()
	var res json.RawMessage
	if err := c.call(dispatch.MethodFinishUpload, map[string]any{"upload_id": up.UploadID, "sha256": hex.EncodeToString(sum.Sum(nil))}, &res); err != nil {
		return err
	}
	return printResult(cmd, res)
}

// sendChunks sends the file from the start. A resumed upload's chunks
// already received are accepted again unchanged (the protocol takes a
// chunk re-sent identical), and the first answer tells how far the
// upload got, so only the rest is read twice: to hash it, then to send.
func sendChunks(c *blobConn, f *os.File, up uploadBegun, size int64, sum hash.Hash, bar *progress) error {
	buf := make([]byte, min(up.MaxChunk, blobPiece)) // a gateway of small messages takes less
	var off int64
	for off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size-off) {
			return err
		}
		piece := buf[:n]
		var got struct {
			Received int64 `json:"received_bytes"`
		}
		if err := c.call(dispatch.MethodUploadChunk, map[string]any{"upload_id": up.UploadID, "offset": off,
			"content": base64.StdEncoding.EncodeToString(piece), "encoding": "base64"}, &got); err != nil {
			return err
		}
		if got.Received < off+int64(n) || got.Received > size {
			return fmt.Errorf("upload_chunk answered received_bytes %d after a chunk ending at %d", got.Received, off+int64(n))
		}
		if err := hashRange(f, sum, off, got.Received); err != nil {
			return err
		}
		off = got.Received
		bar.set(off)
	}
	return nil
}

// hashRange adds bytes [from, to) of f to sum.
func hashRange(f *os.File, sum hash.Hash, from, to int64) error {
	_, err := io.Copy(sum, io.NewSectionReader(f, from, to-from))
	return err
}

type rangePiece struct {
	Content    string `json:"content"`
	Encoding   string `json:"encoding"`
	Size       int64  `json:"size_bytes"`
	SHA256     string `json:"sha256"`
	NextOffset *int64 `json:"next_offset"`
}

func (o *callOptions) blobGet(cmd *cobra.Command, id, path string) (err error) {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		_ = f.Close()
		if st, serr := os.Stat(part); err != nil && serr == nil && st.Size() == 0 {
			_ = os.Remove(part) // nothing to continue from
		}
	}()
	sum := sha256.New()
	off, err := io.Copy(sum, f) // a cut download continues where it stopped
	if err != nil {
		return err
	}
	c, err := o.blobConn(cmd)
	if err != nil {
		return err
	}
	defer c.close()
	var bar *progress
	for {
		var p rangePiece
		if err := c.call(dispatch.MethodReadBlob, map[string]any{"blob_id": id, "mode": dispatch.SampleRange,
			"offset": off, "max_bytes": blobPiece}, &p); err != nil {
			return err
		}
		if bar == nil {
			bar = newProgress(cmd.ErrOrStderr(), p.Size)
		}
		data := []byte(p.Content)
		if p.Encoding == dispatch.EncodingBase64 {
			if data, err = base64.StdEncoding.DecodeString(p.Content); err != nil {
				return fmt.Errorf("read_blob: content: %w", err)
			}
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		sum.Write(data)
		off += int64(len(data))
		bar.set(off)
		if p.NextOffset == nil {
			bar.done()
			return finishGet(f, part, path, p.SHA256, sum)
		}
		if *p.NextOffset != off {
			return fmt.Errorf("read_blob: next_offset %d, but %d bytes were read", *p.NextOffset, off)
		}
	}
}

// finishGet keeps the download only when its digest is the blob's.
func finishGet(f *os.File, part, path, want string, sum hash.Hash) error {
	if err := f.Close(); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		_ = os.Remove(part)
		return fmt.Errorf("downloaded bytes have sha256 %s, the blob %s: %s removed", got, want, part)
	}
	return os.Rename(part, path)
}
