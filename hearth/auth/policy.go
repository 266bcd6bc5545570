package auth

import (
	"fmt"
	"slices"
)

// Effect is what a rule decides.
type Effect string

const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
)

// Any matches every resource or action in a rule.
const Any = "*"

// Rule is one policy rule: (subject or actor, resource, action) → effect.
// A rule names a Subject (a device's name, "owner") or an Actor, not
// both; Resource and Action may be "*".
type Rule struct {
	Subject  string   `json:"subject,omitempty"`
	Actor    Actor    `json:"actor,omitempty"`
	Resource Resource `json:"resource"`
	Action   Action   `json:"action"`
	Effect   Effect   `json:"effect"`
}

func (r Rule) validate() error {
	switch {
	case (r.Subject == "") == (r.Actor == ""):
		return fmt.Errorf("auth: a rule names a subject or an actor, not both nor neither: %+v", r)
	case r.Actor != "" && !slices.Contains(Actors, r.Actor):
		return fmt.Errorf("auth: rule: unknown actor %q", r.Actor)
	case r.Resource != Any && !slices.Contains(Resources, r.Resource):
		return fmt.Errorf("auth: rule: unknown resource %q", r.Resource)
	case r.Action != Any && !slices.Contains(Actions, r.Action):
		return fmt.Errorf("auth: rule: unknown action %q", r.Action)
	case r.Effect != Allow && r.Effect != Deny:
		return fmt.Errorf("auth: rule: effect must be allow or deny, not %q", r.Effect)
	}
	return nil
}

func (r Rule) matches(id Identity, res Resource, act Action) bool {
	if r.Subject != "" && r.Subject != id.Subject || r.Actor != "" && r.Actor != id.Actor {
		return false
	}
	return (r.Resource == Any || r.Resource == res) && (r.Action == Any || r.Action == act)
}

// Actors, Resources and Actions are every value of their kind.
var (
	Actors    = []Actor{ActorOwner, ActorCollaborator, ActorSystemAgent, ActorBackgroundAgent, ActorExternalAgent, ActorService}
	Resources = []Resource{ResConversation, ResMemory, ResVault, ResVoice, ResTools, ResAdmin, ResMetrics}
	Actions   = []Action{ActRead, ActWrite, ActAdmin}
)

// DefaultRules are the rules every policy starts from; the owner's rules
// in auth.json come before them. Whatever no rule allows is denied, and a
// matching deny beats any allow. An external agent's vault writes are
// proposals: the doors turn them into proposals for the owner's review.
func DefaultRules() []Rule {
	allow := func(a Actor, res Resource, act Action) Rule {
		return Rule{Actor: a, Resource: res, Action: act, Effect: Allow}
	}
	return []Rule{
		allow(ActorOwner, Any, Any),

		allow(ActorCollaborator, ResConversation, ActRead),
		allow(ActorCollaborator, ResConversation, ActWrite),
		allow(ActorCollaborator, ResMemory, ActRead),
		allow(ActorCollaborator, ResVoice, ActWrite),

		allow(ActorSystemAgent, ResConversation, ActRead),
		allow(ActorSystemAgent, ResConversation, ActWrite),
		allow(ActorSystemAgent, ResMemory, ActRead),
		allow(ActorSystemAgent, ResMemory, ActWrite),
		allow(ActorSystemAgent, ResVault, ActRead),
		allow(ActorSystemAgent, ResVault, ActWrite),
		allow(ActorSystemAgent, ResTools, ActWrite),

		allow(ActorBackgroundAgent, ResConversation, ActRead),
		allow(ActorBackgroundAgent, ResMemory, ActRead),
		allow(ActorBackgroundAgent, ResMemory, ActWrite),
		allow(ActorBackgroundAgent, ResVault, ActRead),
		allow(ActorBackgroundAgent, ResVault, ActWrite),

		allow(ActorExternalAgent, ResMemory, ActRead),
		allow(ActorExternalAgent, ResVault, ActWrite),
		// service: nothing unless the owner's rules say so.
	}
}

// decide applies rules to (id, res, act): deny when a matching rule
// denies or none allows.
func decide(rules []Rule, id Identity, res Resource, act Action) error {
	allowed := false
	for _, r := range rules {
		if !r.matches(id, res, act) {
			continue
		}
		if r.Effect == Deny {
			return ErrForbidden
		}
		allowed = true
	}
	if !allowed {
		return ErrForbidden
	}
	return nil
}
