package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillgate/skillgate/dispatch"
	"github.com/skillgate/skillgate/session"
	"github.com/skillgate/skillgate/transport"
)

type callOptions struct {
	addr     string
	useTLS   bool
	caFile   string
	certFile string
	keyFile  string
	token    string
	timeout  time.Duration
	stream   bool
}

func newCallCommand() *cobra.Command {
	o := &callOptions{}
	cmd := &cobra.Command{
		Use:   "call METHOD [PARAMS_JSON]",
		Short: "Call one method over the framed transport and print its result",
		Long: "Connect, send Initialize, call METHOD with PARAMS_JSON (default {}), print the result as JSON.\n" +
			"An error response is printed to stderr and the exit status is 1; a connection failure exits 2.",
		Example: "  skillgate call _Keepalive '{}'\n  skillgate call list_skills '{\"detail\":\"summary\"}'",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := json.RawMessage(`{}`)
			if len(args) == 2 {
				params = json.RawMessage(args[1])
			}
			return runCall(cmd, o, args[0], params)
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&o.stream, "stream", false, "for execute_skill and run_code: print the run's events to stderr as they come; Ctrl-C cancels the run")
	return cmd
}

// addFlags adds the connection flags shared by call and runs.
func (o *callOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7400", "server address")
	f.BoolVar(&o.useTLS, "tls", false, "connect with TLS")
	f.StringVar(&o.caFile, "tls-ca", "", "PEM CA bundle to verify the server (default: system roots)")
	f.StringVar(&o.certFile, "tls-cert", "", "PEM client certificate for mutual TLS")
	f.StringVar(&o.keyFile, "tls-key", "", "PEM client key for mutual TLS")
	f.StringVar(&o.token, "token", os.Getenv("SKILLGATE_TOKEN"), "bearer token sent in Initialize (default $SKILLGATE_TOKEN)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
}

func runCall(cmd *cobra.Command, o *callOptions, method string, params json.RawMessage) error {
	if !json.Valid(params) || !bytes.HasPrefix(bytes.TrimSpace(params), []byte("{")) {
		return fmt.Errorf("PARAMS_JSON must be a JSON object, got %q", params)
	}
	if o.stream {
		return runStreamed(cmd, o, method, params)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	conn, err := o.connect(cmd, ctx, session.ClientConfig(), method != dispatch.MethodInitialize)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := conn.Call(ctx, method, params)
	if err != nil {
		return printCallError(cmd, method, err)
	}
	return printResult(cmd, res)
}

// connect dials the gateway and, when initialize is set, sends Initialize
// with the token.
func (o *callOptions) connect(cmd *cobra.Command, ctx context.Context, cfg session.Config, initialize bool) (*session.Conn, error) {
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	conn, err := session.Dial(ctx, o.addr, tc, cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", o.addr, err)
	}
	if !initialize {
		return conn, nil
	}
	init := map[string]any{
		"protocol_version": dispatch.ProtocolVersion,
		"client":           map[string]string{"name": "skillgate-call", "version": buildVersion()},
	}
	if o.token != "" {
		init["token"] = o.token
	}
	if _, err := conn.Call(ctx, dispatch.MethodInitialize, init); err != nil {
		_ = conn.Close()
		return nil, printCallError(cmd, "Initialize", err)
	}
	return conn, nil
}

// printResult prints a result as indented JSON on stdout.
func printResult(cmd *cobra.Command, res json.RawMessage) error {
	var out bytes.Buffer
	if err := json.Indent(&out, res, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := cmd.OutOrStdout().Write(out.Bytes())
	return err
}

// printCallError prints an error response as JSON on stderr (exit 1), or
// returns other failures (exit 2).
func printCallError(cmd *cobra.Command, method string, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", method, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s failed: %s\n", method, te.AppendJSON(nil))
	return &exitError{code: 1}
}

func (o *callOptions) tlsConfig() (*tls.Config, error) {
	if !o.useTLS {
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(o.addr)
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificates in %s", o.caFile)
		}
	}
	if o.certFile != "" || o.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
