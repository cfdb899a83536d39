// Package skills holds the skill registry (skill packages loaded from disk,
// validated, versioned and served as immutable snapshots), the built-in
// Skills Protocol guide, and the blob store.
package skills
