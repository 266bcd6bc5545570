package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Policy is config/memory.policy.yml: what a proposal needs to be applied
// at once, queued for the owner, or rejected. Absent keys take the
// defaults of DefaultPolicy (seed 003 §12). It can tighten governance but
// not loosen the floor Decide keeps whatever it says.
type Policy struct {
	Version   int             `yaml:"version"`
	AutoApply AutoApplyPolicy `yaml:"auto_apply"`
	Queue     QueuePolicy     `yaml:"queue"`
	Reject    RejectPolicy    `yaml:"reject"`
}

// AutoApplyPolicy says where the agent may write on its own.
type AutoApplyPolicy struct {
	Paths         []string `yaml:"paths"` // a file, or a folder ending in "/"
	MinConfidence float64  `yaml:"min_confidence"`
}

// QueuePolicy says what waits for the owner.
type QueuePolicy struct {
	Paths    []string            `yaml:"paths"`
	Types    []string            `yaml:"types"`
	Domains  []string            `yaml:"domains"`
	Keywords map[string][]string `yaml:"keywords"` // domain: words
}

// RejectPolicy says what is refused.
type RejectPolicy struct {
	MinClaimWords int `yaml:"min_claim_words"`
}

// DefaultPolicy is the policy of seed 003 §12, as the shipped
// config/memory.policy.yml says it.
func DefaultPolicy() Policy {
	return Policy{
		Version: 1,
		AutoApply: AutoApplyPolicy{
			Paths:         []string{"summaries/", "knowledge/projects/", "knowledge/system/tool_catalog.md", "entities/"},
			MinConfidence: 0.7,
		},
		Queue: QueuePolicy{
			Paths:   []string{"knowledge/prefs/", "knowledge/people/"},
			Types:   []string{"preference", "identity", "person"},
			Domains: []string{"health", "finance", "legal"},
			Keywords: map[string][]string{
				"health":  {"health", "medical", "diagnosis", "diagnosed", "medication", "therapy", "doctor", "illness", "pregnant", "allergy"},
				"finance": {"salary", "bank", "debt", "loan", "mortgage", "income", "tax", "invest", "credit card", "account number"},
				"legal":   {"lawsuit", "lawyer", "court", "contract", "visa", "immigration", "arrest", "custody"},
			},
		},
		Reject: RejectPolicy{MinClaimWords: 4},
	}
}

// ParsePolicy parses a memory policy. Keys it does not know are an error
// (a misspelt rule must not silently fall back to a default); absent keys
// take DefaultPolicy's values.
func ParsePolicy(b []byte) (Policy, error) {
	p := DefaultPolicy()
	if len(bytes.TrimSpace(b)) == 0 {
		return p, nil
	}
	// Decoding into the defaults would merge lists; decode into an empty
	// value and take only what is given.
	var given Policy
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&given); err != nil && !errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("%s: %w", PolicyFile, err)
	}
	var raw struct {
		AutoApply map[string]any `yaml:"auto_apply"`
		Queue     map[string]any `yaml:"queue"`
		Reject    map[string]any `yaml:"reject"`
		Version   *int           `yaml:"version"`
	}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return Policy{}, fmt.Errorf("%s: %w", PolicyFile, err)
	}
	has := func(m map[string]any, k string) bool { _, ok := m[k]; return ok }
	if raw.Version != nil {
		if *raw.Version != 1 {
			return Policy{}, fmt.Errorf("%s: version %d: this hearth knows version 1", PolicyFile, *raw.Version)
		}
	}
	if has(raw.AutoApply, "paths") {
		p.AutoApply.Paths = given.AutoApply.Paths
	}
	if has(raw.AutoApply, "min_confidence") {
		c := given.AutoApply.MinConfidence
		if math.IsNaN(c) || c < 0 || c > 1 {
			return Policy{}, fmt.Errorf("%s: auto_apply.min_confidence: want a number from 0 to 1", PolicyFile)
		}
		p.AutoApply.MinConfidence = c
	}
	if has(raw.Queue, "paths") {
		p.Queue.Paths = given.Queue.Paths
	}
	if has(raw.Queue, "types") {
		p.Queue.Types = given.Queue.Types
	}
	if has(raw.Queue, "domains") {
		p.Queue.Domains = given.Queue.Domains
	}
	if has(raw.Queue, "keywords") {
		p.Queue.Keywords = given.Queue.Keywords
	}
	if has(raw.Reject, "min_claim_words") {
		if given.Reject.MinClaimWords < 0 {
			return Policy{}, fmt.Errorf("%s: reject.min_claim_words: want a number of words, 0 or more", PolicyFile)
		}
		p.Reject.MinClaimWords = given.Reject.MinClaimWords
	}
	return p, nil
}

// Verdict is what governance does with a proposal.
type Verdict string

const (
	Apply  Verdict = "apply"  // write it now
	Queue  Verdict = "queue"  // wait for the owner
	Reject Verdict = "reject" // refuse it
)

// Decision is a Verdict and why, in words for the owner.
type Decision struct {
	Verdict Verdict
	Why     string
}

// protected are the files and folders whose every change waits for the
// owner, whatever the policy says (seed 003 §8.1): the rules of the memory
// themselves, and the continuity anchor.
var protected = []string{ContinuityFile, AgentFile, InvariantsFile, "config/", "prompts/"}

// Decide governs proposal p under policy pol. current is the file p
// changes as it is now, nil when it does not exist. The owner's own
// proposals apply (they are the source); everyone else's go through the
// rules, safest first:
//
//   - malformed, or made against a file that has changed since (Base): reject
//   - continuity.json, AGENT.md, invariants.md, config/, prompts/: queue
//   - no reason, no sources, an inference not proposed as a draft, a claim
//     too short to mean anything: reject
//   - delete or deprecate, a contradiction or supersession, a queued path, note type or
//     domain (declared or found by keyword), confidence under the policy's
//     minimum, or a path the policy does not auto-apply: queue
//   - otherwise: apply
func Decide(pol Policy, p *Proposal, current []byte) Decision {
	reject := func(f string, a ...any) Decision { return Decision{Reject, fmt.Sprintf(f, a...)} }
	queue := func(f string, a ...any) Decision { return Decision{Queue, fmt.Sprintf(f, a...)} }
	if err := p.validate(); err != nil {
		return reject("malformed proposal: %v", err)
	}
	if d, stale := staleness(p, current); stale {
		return d
	}
	// The new note, when there is one.
	var note *Note
	var claim string
	switch {
	case p.Content != "":
		if isNotePath(p.Path) {
			n, err := ParseNote(p.Path, []byte(p.Content))
			if err != nil {
				return reject("the new note does not parse: %v", err)
			}
			note, claim = n, string(n.Body)
			if old, err := ParseNote(p.Path, current); current != nil && err == nil && old.ID != n.ID {
				return reject("an update keeps the note's id (%s); a new note is created and supersedes it", old.ID)
			}
		} else {
			claim = p.Content
		}
	case p.Patch != nil:
		if current == nil || !isNotePath(p.Path) {
			return reject("a patch needs an existing note")
		}
		n, err := ParseNote(p.Path, current)
		if err != nil {
			return reject("the note to patch does not parse: %v", err)
		}
		note, claim = n, p.Patch.BodyAppend
	}
	if p.Author == AuthorOwner {
		return Decision{Apply, "the owner's own change"}
	}
	if prefix, ok := under(p.Path, protected); ok {
		return queue("changes to %s always wait for the owner", prefix)
	}
	if strings.TrimSpace(p.Reason) == "" {
		return reject("no reason given")
	}
	if len(p.Sources) == 0 {
		return reject("no sources: a memory must name the turns it comes from")
	}
	if p.Inferred && (note == nil || note.Status != Draft) {
		return reject("an inference presented as fact: propose it as a draft note")
	}
	// A claim is text: a patch of tags, confidence or confirmation
	// (the weekly job lowering a stale note's confidence) adds none.
	if p.Op == OpCreate || p.Op == OpUpdate && (p.Patch == nil || p.Patch.BodyAppend != "") {
		if w := len(strings.FieldsFunc(claim, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })); w < pol.Reject.MinClaimWords {
			return reject("too vague: %d words, the policy wants at least %d", w, pol.Reject.MinClaimWords)
		}
	}
	switch {
	case p.Op == OpDelete:
		return queue("deletion is explicit: the owner decides")
	case p.Op == OpDeprecate:
		return queue("retiring a note: the owner decides")
	case p.Contradicts:
		return queue("contradicts what is known")
	case len(p.Supersedes) > 0:
		return queue("replaces an existing note")
	case p.Inferred:
		return queue("an inference, as a draft")
	}
	if prefix, ok := under(p.Path, pol.Queue.Paths); ok {
		return queue("the policy reviews changes to %s", prefix)
	}
	if note != nil && slices.Contains(pol.Queue.Types, note.Type) {
		return queue("the policy reviews notes of type %s", note.Type)
	}
	for _, d := range p.Domains {
		if slices.Contains(pol.Queue.Domains, strings.ToLower(d)) {
			return queue("touches a sensitive domain: %s", d)
		}
	}
	if note != nil {
		for _, t := range note.Tags {
			if slices.Contains(pol.Queue.Domains, strings.ToLower(t)) {
				return queue("touches a sensitive domain: %s", t)
			}
		}
	}
	text := strings.ToLower(claim)
	if note != nil {
		text += " " + strings.ToLower(note.Title)
	}
	for _, domain := range slices.Sorted(maps.Keys(pol.Queue.Keywords)) {
		for _, w := range pol.Queue.Keywords[domain] {
			if w != "" && containsWord(text, strings.ToLower(w)) {
				return queue("touches a sensitive domain: %s (%q)", domain, w)
			}
		}
	}
	if p.Risk != "" && p.Risk != "low" {
		return queue("the proposer rates its risk %s", p.Risk)
	}
	if note != nil && (p.Op == OpCreate || p.Content != "") && note.Confidence < pol.AutoApply.MinConfidence {
		return queue("confidence %.2g is under the policy's %.2g", note.Confidence, pol.AutoApply.MinConfidence)
	}
	if _, ok := under(p.Path, pol.AutoApply.Paths); !ok {
		return queue("the policy does not apply changes to %s on its own", p.Path)
	}
	return Decision{Apply, "low risk, with sources"}
}

// staleness rejects a proposal made against another version of its file.
func staleness(p *Proposal, current []byte) (Decision, bool) {
	switch {
	case p.Op == OpCreate && current != nil:
		return Decision{Reject, fmt.Sprintf("%s exists: propose an update against it", p.Path)}, true
	case p.Op != OpCreate && current == nil:
		return Decision{Reject, fmt.Sprintf("%s does not exist", p.Path)}, true
	case p.Op != OpCreate && Hash(current) != p.Base:
		return Decision{Reject, fmt.Sprintf("%s changed since the proposal was made (an edit of the owner's?): propose again against it", p.Path)}, true
	}
	return Decision{}, false
}

// under reports the first of prefixes that p is, or is inside ("dir/").
func under(p string, prefixes []string) (string, bool) {
	for _, pre := range prefixes {
		if pre == "" {
			continue
		}
		if p == strings.TrimSuffix(pre, "/") || strings.HasSuffix(pre, "/") && strings.HasPrefix(p, pre) {
			return pre, true
		}
	}
	return "", false
}

func isNotePath(p string) bool {
	return strings.HasSuffix(p, ".md") && (strings.HasPrefix(p, KnowledgeDir+"/") || strings.HasPrefix(p, SummariesDir+"/")) &&
		!strings.HasSuffix(p, "/README.md")
}

// containsWord reports whether w occurs in text at word boundaries (a
// prefix of a word counts: "invest" finds "investments").
func containsWord(text, w string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], w)
		if j < 0 {
			return false
		}
		j += i
		if j == 0 || !isWordByte(text[j-1]) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 0x80
}
