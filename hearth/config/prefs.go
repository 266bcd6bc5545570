package config

import "github.com/mnemo/mnemo/hearth"

// PreferencesFile, in the memory root, holds the owner's preferences:
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5",
//	 "context": {"budget_tokens": 24000, "shares": {"recent": 75, "memories": 15, "tools": 10}}}
//
// Every field is optional. provider and model override the configured
// ones (Config.ModelSettings); context overrides the base context budget
// (Config.Budget), an omitted field keeping its base value. It is checked
// before every turn, so an edit applies to the next message with no
// restart. Keys stay in the environment.
const PreferencesFile = "preferences.json"

// Preferences is a valid PreferencesFile.
type Preferences struct {
	Provider string // "" or a supported provider, lower case
	Model    string // "" or a model name
	// Context is the base budget with the file's "context" object over
	// it, validated; nil when the file has none.
	Context *hearth.ContextBudget
}
