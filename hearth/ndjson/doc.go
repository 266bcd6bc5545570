// Package ndjson is hearth's first door: protocol v1 (package ipc) as NDJSON over TCP.
package ndjson
