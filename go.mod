module github.com/narrowd/narrowd

go 1.26.8

require (
	cel.dev/cel-go v0.33.2 // indirect
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
