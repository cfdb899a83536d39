module github.com/skillgate/skillgate/bench

go 1.26.8

require (
	github.com/creachadair/jrpc2 v1.3.6
	github.com/sourcegraph/jsonrpc2 v0.2.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/creachadair/mds v0.31.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
