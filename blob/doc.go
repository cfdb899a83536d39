// Package blob stores the gateway's blobs: immutable byte strings with a
// random id ("blob:" + 32 hex digits), a MIME kind, an owner, a SHA-256
// and a creation time, removed after a TTL unless a reader holds them open.
//
// # Backends
//
// Store is the contract; FSStore (files under a data folder, the embedded
// default), MemStore (tests and single-process tools) and the
// S3-compatible store in package s3blob implement it, and all of them
// pass the conformance suite in package blobtest. A Put is all or nothing
// on every backend: a blob is visible complete or not at all, also after a
// crash.
//
// # Leases and TTL
//
// An open Blob holds a lease: a sweep never removes a blob this process
// holds open. Leases are per process; on a store shared by replicas a
// blob that expires while another replica reads it may vanish under that
// reader (reads then fail with ErrNotFound), so the TTL should be far
// longer than any read.
//
// # The Objects space
//
// Every Store also offers Objects: a flat key/object space in the same
// backend (Dir/kv on disk, <prefix>/kv/ in a bucket), shared by every
// replica that shares the blobs. It is the seam for records that any
// replica must find: pending uploads (Uploads keeps them under
// "uploads/"), and run records and retained events (keep them under
// "runs/"). Objects are replaced whole and never half-written; with no
// lock across replicas, data several replicas may write at once belongs
// under keys of its own (one object per event) rather than in one object
// updated in place. ListObjects with a prefix finds them again, sorted by
// key (zero-padded sequence numbers sort in order).
//
// # Uploads
//
// Uploads turn chunks sent over several calls, possibly to several
// replicas, into one blob: Begin records the kind, size and owner, Chunk
// stores each chunk as an object keyed by its offset (re-sending one is
// harmless), Finish streams the chunks in order into Put and checks the
// SHA-256. An upload that gets no chunk for an hour is swept.
//
// Uploads stay bounded: an owner has at most UploadOptions.MaxPending
// unfinished uploads, and a store that enforces quotas (FSStore,
// MemStore) counts every chunk against them as it is stored. Chunks and
// the finish claim are created with Objects.CreateObject, so that racing
// chunks at one offset keep one version and exactly one of racing
// finishes makes the blob.
package blob
