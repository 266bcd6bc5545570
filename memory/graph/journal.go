package graph

import (
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// FromRecord is the event a journal record is, and false for what is not
// one (a tombstone, a decision, a forgotten record's redacted text).
func FromRecord(r journal.Record, session string) (Event, bool) {
	if r.Kind != "" || r.Redacted || r.ID == "" {
		return Event{}, false
	}
	ev := Event{ID: r.ID, Session: session, TS: r.TS, Actor: r.Role, Text: r.Text}
	switch r.Role {
	case memory.RoleUser:
		ev.Type = EventUser
	case memory.RoleAgent:
		ev.Type = EventAgent
		for _, c := range r.ToolCalls {
			ev.Calls = append(ev.Calls, c.ID)
		}
		if r.Incomplete {
			ev.Outcome = OutcomePartial
		}
	case memory.RoleTool:
		ev.Type = EventToolResult
		ev.Outcome = OutcomeSuccess
		if r.Tool != nil {
			ev.CallID = r.Tool.CallID
			if r.Tool.Error != "" || (r.Tool.Confirmed != nil && !*r.Tool.Confirmed) {
				ev.Outcome = OutcomeFailure
			}
		}
	default:
		return Event{}, false
	}
	return ev, true
}
