// Package archtest holds tests that keep the package graph as designed:
// transport, metrics and sandbox are leaves, session does not know
// dispatch, and only cmd imports viper or cobra.
package archtest
