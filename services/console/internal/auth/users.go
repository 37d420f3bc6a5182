// Package auth signs people into the console: a users file with bcrypt
// password hashes for local use (OIDC when configured, see oidc.go), a
// session in an encrypted, signed, HTTP-only cookie, and the two roles,
// viewer (reads everything but personal data) and operator (also acts on
// cases and reveals personal data).
package auth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// The roles.
const (
	Viewer   = "viewer"
	Operator = "operator"
)

// User is a signed-in person: a login name and a role.
type User struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// CanAct reports whether u may act (resolve cases, reveal personal data).
func (u User) CanAct() bool { return u.Role == Operator }

// Users is the users file: per login, a role and a bcrypt hash.
type Users struct {
	byName map[string]entry
}

type entry struct {
	role string
	hash []byte
}

// ParseUsers reads a users file: one user per line, "login role hash"
// separated by spaces (role viewer or operator, hash a bcrypt hash as
// `console hash-password` prints it); blank lines and lines starting with
// # are skipped. The error names the line at fault.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{byName: map[string]entry{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want \"login role bcrypt-hash\"", n)
		}
		if f[1] != Viewer && f[1] != Operator {
			return nil, fmt.Errorf("line %d: role %q: want viewer or operator", n, f[1])
		}
		if _, err := bcrypt.Cost([]byte(f[2])); err != nil {
			return nil, fmt.Errorf("line %d: the hash is not a bcrypt hash (make one with `console hash-password`)", n)
		}
		u.byName[f[0]] = entry{role: f[1], hash: []byte(f[2])}
	}
	return u, sc.Err()
}

// ErrBadLogin means the login is unknown or the password wrong; which of
// the two is not told.
var ErrBadLogin = errors.New("unknown login or wrong password")

// Check returns the user whose login and password these are.
func (u *Users) Check(login, password string) (User, error) {
	e, ok := u.byName[login]
	if !ok {
		// Spend the same time as a wrong password, so timing does not tell
		// which logins exist.
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return User{}, ErrBadLogin
	}
	if bcrypt.CompareHashAndPassword(e.hash, []byte(password)) != nil {
		return User{}, ErrBadLogin
	}
	return User{Name: login, Role: e.role}, nil
}

// dummyHash is a bcrypt hash of nothing anyone types.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("\x00no user\x00"), bcrypt.DefaultCost)

// Hash returns the bcrypt hash of password for a users file.
func Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}
