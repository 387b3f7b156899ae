module github.com/kvhash/kvhash

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	github.com/tetratelabs/wazero v1.12.0
	github.com/zeebo/xxh3 v1.1.0
	golang.org/x/sys v0.44.0
)

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
