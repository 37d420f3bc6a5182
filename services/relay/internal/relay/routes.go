package relay

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// Route sends the rows whose event type starts with Prefix to Queue.
type Route struct {
	Prefix string
	// Queue is a queue name or URL as configured; the composition root
	// replaces a name with its URL before building a Relay.
	Queue string
}

// Outbox is one outbox table and the routes of its rows.
type Outbox struct {
	Table  outbox.Table
	Routes []Route
}

// Match returns the route of eventType: the one with the longest matching
// prefix, so a specific route can override a broad one. ok is false when no
// prefix matches.
func (o Outbox) Match(eventType string) (r Route, ok bool) {
	for _, c := range o.Routes {
		if strings.HasPrefix(eventType, c.Prefix) && (!ok || len(c.Prefix) > len(r.Prefix)) {
			r, ok = c, true
		}
	}
	return r, ok
}

// LeaseName names the lease of shard i of an outbox split into n shards:
// outbox:<table>:<i>/<n>, or outbox:<table>:0 for an outbox in one shard,
// the name relays used before outboxes were split. The number of shards is
// part of the name, so leases of different splits never share a row and
// lease.Layout keeps two splits from running at once.
func LeaseName(t outbox.Table, i, n int) string {
	if n == 1 {
		return leasePrefix(t) + "0"
	}
	return fmt.Sprintf("%s%d/%d", leasePrefix(t), i, n)
}

// leasePrefix starts the name of every shard lease of the outbox t.
func leasePrefix(t outbox.Table) string { return "outbox:" + t.String() + ":" }

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ParseRoutes parses the RELAY_ROUTES syntax:
//
//	schema.table=prefix>queue,prefix>queue;schema.table=prefix>queue
//
// Outboxes are separated by semicolons, routes by commas; a queue is a name
// or a URL. The error says which part is wrong and what it expects.
func ParseRoutes(s string) ([]Outbox, error) {
	var out []Outbox
	seen := map[outbox.Table]bool{}
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ob, err := parseOutbox(part)
		if err != nil {
			return nil, err
		}
		if seen[ob.Table] {
			return nil, fmt.Errorf("outbox %s is listed twice", ob.Table)
		}
		seen[ob.Table] = true
		out = append(out, ob)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("want at least one outbox such as ingest.outbox=billing.>onceflow-billing")
	}
	return out, nil
}

func parseOutbox(part string) (Outbox, error) {
	name, routes, ok := strings.Cut(part, "=")
	if !ok {
		return Outbox{}, fmt.Errorf("%q: want schema.table=prefix>queue,...", part)
	}
	schema, table, ok := strings.Cut(strings.TrimSpace(name), ".")
	if !ok || !identifier.MatchString(schema) || !identifier.MatchString(table) {
		return Outbox{}, fmt.Errorf("%q: want schema.table, each matching %s", name, identifier)
	}
	ob := Outbox{Table: outbox.Table{Schema: schema, Name: table}}
	prefixes := map[string]bool{}
	for rt := range strings.SplitSeq(routes, ",") {
		prefix, queue, ok := strings.Cut(strings.TrimSpace(rt), ">")
		prefix, queue = strings.TrimSpace(prefix), strings.TrimSpace(queue)
		if !ok || prefix == "" || queue == "" {
			return Outbox{}, fmt.Errorf("outbox %s: route %q: want eventTypePrefix>queueNameOrURL", ob.Table, rt)
		}
		if prefixes[prefix] {
			return Outbox{}, fmt.Errorf("outbox %s: prefix %q is routed twice", ob.Table, prefix)
		}
		prefixes[prefix] = true
		ob.Routes = append(ob.Routes, Route{Prefix: prefix, Queue: queue})
	}
	return ob, nil
}
