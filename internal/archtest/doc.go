// Package archtest holds tests that keep the package graph as designed,
// checking each package on its own: every package states which project
// packages it may import; transport, metrics and the internal helpers
// import none; dispatch knows no front door; session does not know
// dispatch; application error codes are spelled only above dispatch's
// catalogue; the pieces of sandbox stay behind it; and only cmd imports
// viper or cobra.
package archtest
