// Package tui is the mnemo client. Until the Bubble Tea interface lands it
// offers plain line-oriented commands: send one message and stream the
// reply, print the history, or chat line by line.
package tui
