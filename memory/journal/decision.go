package journal

import "errors"

// KindDecision is the Kind of a decision record: the conversation's
// account of what became of a proposal to change the memory vault
// (applied or rejected, by policy or by the owner). It is not a turn:
// the live view for a conversation — Tail, Find, ReadShards — leaves it
// out; Scan and ScanAfter visit it (IsTurn says which records are
// turns), so that a reader that wants decisions finds them. The vault's
// ledger and git are the truth of what changed; the record is written
// after them.
const KindDecision = "decision"

// Decision is what a decision record says. By, on the Record, is who
// decided ("policy", "owner", …).
type Decision struct {
	Proposal string `json:"proposal"`         // the proposal's id
	Path     string `json:"path"`             // the file it changes, relative to the memory root
	Verdict  string `json:"verdict"`          // "applied" | "rejected"
	Why      string `json:"why,omitempty"`    // why, as the owner is told
	Commit   string `json:"commit,omitempty"` // the vault's git commit; "" when none (yet)
}

// IsTurn reports whether r is a turn of the conversation: neither a
// tombstone nor a decision.
func (r Record) IsTurn() bool { return r.Kind == "" }

// IsDecision reports whether r records a proposal's decision.
func (r Record) IsDecision() bool { return r.Kind == KindDecision }

// DecisionRecord is the record of d, decided by by.
func DecisionRecord(d Decision, by string) Record {
	return Record{Role: RoleSystem, Kind: KindDecision, Decision: &d, By: by}
}

// checkDecision checks a decision record: it names a proposal and a
// verdict, and carries nothing of a turn's.
func checkDecision(rec *Record) error {
	d := rec.Decision
	switch {
	case d == nil || d.Proposal == "" || d.Verdict == "":
		return errors.New("decision record names no proposal or verdict")
	case len(rec.Forgets) > 0:
		return errors.New("decision record forgets records")
	}
	return nil
}
