// Package config is hearth's configuration: one typed Config, loaded and
// validated once at start by Load, and the owner's preferences
// (PreferencesFile), kept as validated snapshots by a PrefsWatcher.
//
// # Precedence
//
// Each setting is its built-in default, overridden by the config file,
// overridden by the environment, overridden by a flag given on the command
// line. Every value remembers where it came from (Setting.Source: default,
// file <path>, env NAME, flag -name), which `hearth config` shows
// (Config.Print) and every validation error names:
//
//	-context-budget 10 (flag): must be between 1000 and 2000000
//	model.timeout "soon" (file /home/me/.config/mnemo/hearth.toml:19): want a Go duration such as 90s or 10m
//
// An empty value (a variable set to blanks, -root "", name = "") is the
// same as leaving the setting out. Load reports every problem at once.
//
// Libraries take options and mains own flags: Bind registers hearth's
// flags on the main's FlagSet, and Load takes the parsed result.
//
// # The config file
//
// The file is TOML, at $XDG_CONFIG_HOME/mnemo/hearth.toml (the directory
// os.UserConfigDir returns), or wherever -config names. It is optional:
// a missing default file is no file; a missing -config file is an error.
// It is plain configuration, not a secret store: API keys and
// APP_AUTH_TOKEN are refused there, with an error saying which variable
// to set instead. An unknown key is an error naming the key and its line.
// Durations are strings ("90s", "2m"); a relative path is relative to the
// file's directory. The full file, every setting with its default (or an
// example value) and the flag or variable that overrides it:
//
//	addr = "127.0.0.1:7744"           # -addr; MNEMO_HEARTH_PORT sets 127.0.0.1:PORT
//	listen_remote = false             # -listen-remote: allow a non-loopback addr
//	http = "127.0.0.1:7745"           # -http: the HTTP door (default: none)
//	tls = false                       # -tls: TLS on the port, self-signed; clients pin it
//	root = "/home/me/mnemo"           # -root: the memory root
//	token_file = "token"              # -token-file (relative: beside this file)
//	gateway = "gateway.json"          # -gateway: MCP servers
//	history = 50                      # -history: turns sent to a client on connect
//	tool_timeout = "60s"              # -tool-timeout
//	confirm_timeout = "2m"            # -confirm-timeout
//	max_iterations = 0                # -max-iterations: model calls per turn; 0: no bound
//	context_budget = 24000            # -context-budget: tokens of conversation per turn
//	log_level = "info"                # -log-level: debug, info, warn or error
//	log_file = "hearth.log"           # -log-file, MNEMO_LOG_FILE: left out, hearth logs to stderr
//	log_max_size = 10                 # -log-max-size: MiB at which the log file rotates
//	log_backups = 5                   # -log-backups: rotated files kept (hearth.log.1.gz ...)
//	log_compress = true               # -log-compress: gzip rotated files
//
//	[model]
//	provider = "xai"                  # MNEMO_PROVIDER: xai, anthropic or openai; left out: by the keys set
//	name = "grok-4.3"                 # MNEMO_MODEL; left out: the provider's default
//	timeout = "5m"                    # MNEMO_MODEL_TIMEOUT: per model call, never retried
//	first_byte_timeout = "1m"         # MNEMO_MODEL_FIRST_BYTE_TIMEOUT: no reply yet; retried
//	idle_timeout = "1m"               # MNEMO_MODEL_IDLE_TIMEOUT: the reply went silent; retried
//	xai_base_url = "https://api.x.ai/v1"             # XAI_BASE_URL
//	xai_api = "responses"                            # MNEMO_XAI_API: responses or chat
//	xai_server_tools = ["web_search", "x_search"]    # MNEMO_XAI_SERVER_TOOLS (responses only)
//	anthropic_base_url = "https://api.anthropic.com" # ANTHROPIC_BASE_URL
//	openai_base_url = "http://localhost:11434/v1"    # OPENAI_BASE_URL (Ollama, llama.cpp, vLLM...)
//
//	[recall]
//	embedder = "ollama"               # MNEMO_EMBEDDER: auto, wordvec, openai, ollama or none
//	vectors = "/home/me/.cache/mnemo/wink-sg100-100k.bin"  # -vectors, MNEMO_VECTORS (wordvec)
//	embed_model = "qwen3-embedding:0.6b"             # MNEMO_EMBED_MODEL (openai, ollama)
//	embed_dim = 1024                                 # MNEMO_EMBED_DIM (openai, ollama)
//	embed_base_url = "http://localhost:11434"        # MNEMO_EMBED_BASE_URL
//	qdrant_addr = "localhost:6334"    # MNEMO_QDRANT_ADDR; left out: the embedded index
//	qdrant_tls = false                # MNEMO_QDRANT_TLS
//
//	[voice]
//	provider = "xai"                  # MNEMO_VOICE_PROVIDER: xai, openai or none; left out: xai when XAI_API_KEY is set
//	model = "grok-voice-latest"       # MNEMO_VOICE_MODEL; left out: the provider's default
//	voice = "eve"                     # MNEMO_VOICE_VOICE; left out: the provider's default
//	base_url = "https://api.x.ai/v1"  # MNEMO_VOICE_BASE_URL: where credentials are minted (tests, proxies)
//	vad = "server_vad"                # MNEMO_VOICE_VAD: server_vad, or manual (push-to-talk)
//	vad_threshold = 0.2               # MNEMO_VOICE_VAD_THRESHOLD: lower is more sensitive (xAI: 0.1-0.9)
//	vad_silence = "500ms"             # MNEMO_VOICE_VAD_SILENCE: the pause that ends a turn
//	vad_prefix_padding = "300ms"      # MNEMO_VOICE_VAD_PREFIX_PADDING: audio kept before speech starts
//	transcription_model = "grok-transcribe"          # MNEMO_VOICE_TRANSCRIPTION_MODEL
//
//	[curator]
//	enabled = true                    # MNEMO_CURATOR: curate each turn into the vault when a model is configured
//	model = "grok-4-fast"             # MNEMO_CURATOR_MODEL; left out: the chat model
//	flush = true                      # MNEMO_CURATOR_FLUSH: summarise turns before they leave the context window
//
//	[jobs]
//	enabled = true                    # MNEMO_JOBS: run the vault's jobs (they need the curator on)
//
//	[rate]                            # requests a minute per identity, through every door; 0: no limit
//	owner = 0                         # left out: 0
//	collaborator = 120                # left out: 120
//	system_agent = 0                  # left out: 0
//	background_agent = 0              # left out: 0
//	external_agent = 60               # left out: 60
//	service = 300                     # left out: 300
//
// (testdata/example.toml is this file; a test loads it.)
//
// # Defaults
//
// addr 127.0.0.1:7744; root $XDG_DATA_HOME/mnemo (else
// ~/.local/share/mnemo); token_file and gateway.json in
// $XDG_CONFIG_HOME/mnemo; history 50; tool_timeout 60s; confirm_timeout
// 2m; max_iterations 0; context_budget 24000; log_level info; log to
// stderr (a log_file rotates at 10 MiB, 5 gzip'd backups kept); model
// provider chosen by the keys set (XAI_API_KEY, else ANTHROPIC_API_KEY,
// else OPENAI_API_KEY or OPENAI_BASE_URL), its default model and base URL,
// timeout 5m, first_byte_timeout and idle_timeout 1m (each at most
// timeout), xai_api responses; recall embedder auto (the word vectors at
// $XDG_CACHE_HOME/mnemo/wink-sg100-100k.bin when they exist, else lexical
// only), the embedded index. For the openai and ollama embedders,
// embed_base_url defaults to model.openai_base_url, then
// https://api.openai.com/v1 (openai), or to http://localhost:11434
// (ollama), and the key MNEMO_EMBED_API_KEY to OPENAI_API_KEY. Voice:
// provider xai when XAI_API_KEY is set, else none (openai is chosen
// explicitly and mints with OPENAI_API_KEY); the provider's model, voice,
// base URL and transcription model; vad server_vad with threshold 0.2,
// silence 500ms (seed 004: a silent session is never answered) and
// prefix padding 300ms. The voice key is the provider's API key: hearth
// mints short-lived credentials with it and never sends it to a client.
// Rate limits, requests a minute per identity through every door: owner,
// system_agent and background_agent none, collaborator 120,
// external_agent 60, service 300.
//
// # Secrets
//
// XAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_API_KEY, MNEMO_EMBED_API_KEY,
// MNEMO_QDRANT_API_KEY and APP_AUTH_TOKEN come from the environment only,
// as a Secret, which no fmt verb, JSON, slog or Print reveals.
//
// # Preferences
//
// PreferencesFile, in the memory root, may override the model provider,
// the model and the context budget for the next turn, with no restart.
// A PrefsWatcher checks it before each turn at the cost of a stat when it
// is unchanged, parses and validates it once per change, and keeps the
// last valid snapshot when an edit breaks it, reporting that once.
package config
