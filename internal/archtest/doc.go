// Package archtest holds tests that keep the package graph as designed,
// checking each package on its own: transport, metrics, sandbox and
// dispatch/auth are leaves, session does not know dispatch, skills does not
// know sandbox, and only cmd imports viper or cobra.
package archtest
