package curator

import (
	"fmt"
	"strings"

	"github.com/mnemo/mnemo/memory/journal"
)

// Message renders what the curator reads: the records before from as
// context, then the records to curate, each under its id (the ids a
// proposal cites). Tool records show their tool and outcome.
func Message(thread string, recs []journal.Record, from int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Conversation %q. Cite records by the id in brackets.\n", thread)
	for i, r := range recs {
		if i == 0 && from > 0 {
			b.WriteString("\n## Earlier, for context\n")
		}
		if i == from {
			b.WriteString("\n## To curate\n")
		}
		role := r.Role
		if r.Tool != nil {
			role = "tool " + r.Tool.Name
		}
		fmt.Fprintf(&b, "[%s] %s: %s\n", r.ID, role, strings.TrimSpace(r.Text))
	}
	b.WriteString("\nAnswer in the schema: the ops to propose (or none) and any questions for the person.\n")
	return b.String()
}
