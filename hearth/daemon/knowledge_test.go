package daemon

import (
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/recollect"
)

// The daemon's memory indexes the vault's notes: hearth tells it which
// files each vault write changed.
var _ hearth.KnowledgeIndex = (*recollect.Memory)(nil)

// The daemon's memory rebuilds its index when the owner purges it.
var _ hearth.IndexRebuilder = (*recollect.Memory)(nil)
