package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Statement is an sqlc query rewritten for pgx: @name parameters become
// $1, $2, … in order of first appearance.
type Statement struct {
	SQL    string
	Params []string
}

// Args orders values by the statement's parameters; an error names a
// parameter without a value.
func (s Statement) Args(values map[string]any) ([]any, error) {
	args := make([]any, len(s.Params))
	for i, p := range s.Params {
		v, ok := values[p]
		if !ok {
			return nil, fmt.Errorf("no value for @%s", p)
		}
		args[i] = v
	}
	return args, nil
}

// sqlcParam is a parameter as sqlc writes one: @name, sqlc.arg(name) or
// sqlc.narg(name).
var sqlcParam = regexp.MustCompile(`@([a-z_][a-z0-9_]*)|sqlc\.n?arg\(([a-z_][a-z0-9_]*)\)`)

// ParseQuery finds the query called name in an sqlc query file and
// rewrites it for pgx. The error says when the file has no such query.
func ParseQuery(file, name string) (Statement, error) {
	_, rest, ok := strings.Cut(file, "-- name: "+name+" ")
	if !ok {
		return Statement{}, fmt.Errorf("no query named %s", name)
	}
	rest, _, _ = strings.Cut(rest, "-- name: ")
	var lines []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			lines = append(lines, line)
		}
	}
	var st Statement
	index := map[string]int{}
	st.SQL = sqlcParam.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(m string) string {
		sub := sqlcParam.FindStringSubmatch(m)
		p := sub[1] + sub[2]
		if _, ok := index[p]; !ok {
			st.Params = append(st.Params, p)
			index[p] = len(st.Params)
		}
		return "$" + strconv.Itoa(index[p])
	})
	return st, nil
}

// ReceiptStatement reads ingest's ReceiptInsertMany from the repository,
// so the ceiling runs exactly the statement ingest runs for a receipt that
// arrives alone (a batch of one).
func ReceiptStatement(root string) (Statement, error) {
	path := filepath.Join(root, "db", "ingest", "queries", "webhook_receipts.sql")
	b, err := os.ReadFile(path)
	if err != nil {
		return Statement{}, fmt.Errorf("read ingest's receipt query: %w", err)
	}
	st, err := ParseQuery(string(b), "ReceiptInsertMany")
	if err != nil {
		return Statement{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
