package auth_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/services/console/internal/auth"
)

func TestUsersFile(t *testing.T) {
	t.Parallel()
	op, err := auth.Hash("op-pass")
	if err != nil {
		t.Fatal(err)
	}
	view, _ := auth.Hash("view-pass")
	users, err := auth.ParseUsers(strings.NewReader("# people\n\nana operator " + op + "\nvic viewer " + view + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := users.Check("ana", "op-pass"); err != nil || u.Role != auth.Operator || !u.CanAct() {
		t.Errorf("ana: %+v, %v; want an operator", u, err)
	}
	if u, err := users.Check("vic", "view-pass"); err != nil || u.Role != auth.Viewer || u.CanAct() {
		t.Errorf("vic: %+v, %v; want a viewer who cannot act", u, err)
	}
	for _, bad := range [][2]string{{"ana", "view-pass"}, {"nobody", "op-pass"}, {"vic", ""}} {
		if _, err := users.Check(bad[0], bad[1]); err != auth.ErrBadLogin {
			t.Errorf("Check(%q, %q) = %v, want ErrBadLogin", bad[0], bad[1], err)
		}
	}
}

func TestUsersFileNamesTheBadLine(t *testing.T) {
	t.Parallel()
	h, _ := auth.Hash("x")
	for _, tc := range []struct{ file, want string }{
		{"ana operator", "line 1: want"},
		{"ok viewer " + h + "\nbo admin " + h, `line 2: role "admin"`},
		{"ana operator plaintext", "line 1: the hash is not a bcrypt hash"},
	} {
		if _, err := auth.ParseUsers(strings.NewReader(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseUsers(%q) = %v, want an error with %q", tc.file, err, tc.want)
		}
	}
}
