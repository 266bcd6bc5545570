// Package tui is the mnemo client.
//
// Run opens the interactive terminal UI: a Bubble Tea program whose one
// root Model routes every message in Update and draws in View. It talks
// to hearth through a Backend (Remote in production, a stub in tests);
// Remote.Run is the one goroutine that reads hearth's events and hands
// them to the program as messages. Update does no I/O: requests go into
// the Backend's queue, and the clock and tickers are injected so that
// tests drive time themselves.
//
// The plain commands (Send, History, Chat, Ping) serve scripts, pipes and
// the one-shot subcommands of cmd/mnemo.
package tui
