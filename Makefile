# mnemo: `make run` starts hearth (if it is not running) and a client;
# `make test` installs what the tests need and runs them.

GO       ?= go
export PATH := $(PATH):/usr/local/go/bin
BIN      := bin
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
STATE    := $(or $(XDG_STATE_HOME),$(HOME)/.local/state)/mnemo
FUZZTIME ?= 30s
# Reference MCP servers (written by others) for the tool integration tests.
MCP_NODE_DIR := $(CURDIR)/.cache/mcp-servers
MCP_PKGS := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31

.PHONY: all build run test deps vet mcp-servers bench bench-hearth bench-journal bench-agent fuzz clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/hearth ./cmd/hearth
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/mnemo ./cmd/mnemo

# Start hearth in the background unless one already answers, then chat.
run: build
	@mkdir -p "$(STATE)"
	@if ! $(BIN)/mnemo ping >/dev/null 2>&1; then \
		echo "starting hearth (log: $(STATE)/hearth.log)"; \
		nohup $(BIN)/hearth >>"$(STATE)/hearth.log" 2>&1 & \
		$(BIN)/mnemo ping -wait 10s || { echo "hearth did not start; see $(STATE)/hearth.log"; exit 1; }; \
	fi
	@$(BIN)/mnemo

deps: mcp-servers
	$(GO) mod download

mcp-servers: $(MCP_NODE_DIR)/.installed

$(MCP_NODE_DIR)/.installed: Makefile
	@command -v npm >/dev/null || { echo "npm is needed for the MCP integration tests (apt-get install npm)"; exit 1; }
	mkdir -p $(MCP_NODE_DIR)
	npm install --prefix $(MCP_NODE_DIR) --no-audit --no-fund --loglevel=error $(MCP_PKGS)
	touch $@

vet:
	$(GO) vet ./...

test: deps vet
	MNEMO_MCP_NODE_MODULES=$(MCP_NODE_DIR)/node_modules $(GO) test -race -count=1 -timeout 25m ./...

# Benchmarks are separate from `make test`; numbers go in closing notes.
bench: bench-hearth bench-journal bench-agent

bench-hearth:
	$(GO) test -run '^$$' -bench . -benchtime 2000x -timeout 30m ./hearth/...

bench-journal:
	$(GO) test -run '^$$' -bench . -timeout 30m ./memory/...

bench-agent:
	$(GO) test -run '^$$' -bench . -timeout 30m ./hearth/agent/ ./hearth/tools/ ./hearth/llm/

fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

clean:
	rm -rf $(BIN)
