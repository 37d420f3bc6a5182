package auth

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/labstack/echo/v4"
)

// CookieName is the session cookie's name.
const CookieName = "console_session"

// contextKey is where the signed-in user is kept on the echo context.
const contextKey = "console.user"

// Sessions issues and reads session cookies: signed and encrypted
// (gorilla/securecookie), HTTP-only, SameSite=Lax, Secure unless the
// console is told it is served over plain HTTP.
type Sessions struct {
	codec  *securecookie.SecureCookie
	ttl    time.Duration
	secure bool
}

// session is what the cookie carries.
type session struct {
	User    User  `json:"u"`
	Expires int64 `json:"e"`
}

// NewSessions derives the signing and encryption keys from key (at least
// 32 bytes).
func NewSessions(key []byte, ttl time.Duration, secure bool) (*Sessions, error) {
	if len(key) < 32 {
		return nil, errors.New("session key: want at least 32 bytes")
	}
	hashKey := sha256.Sum256(append([]byte("sign:"), key...))
	blockKey := sha256.Sum256(append([]byte("encrypt:"), key...))
	codec := securecookie.New(hashKey[:], blockKey[:]).MaxAge(int(ttl.Seconds())).SetSerializer(securecookie.JSONEncoder{})
	return &Sessions{codec: codec, ttl: ttl, secure: secure}, nil
}

// Start signs u in: it sets the session cookie on c's response.
func (s *Sessions) Start(c echo.Context, u User) error {
	v, err := s.codec.Encode(CookieName, session{User: u, Expires: time.Now().Add(s.ttl).Unix()})
	if err != nil {
		return err
	}
	c.SetCookie(s.cookie(v, int(s.ttl.Seconds())))
	return nil
}

// End signs the user out: the cookie is cleared.
func (s *Sessions) End(c echo.Context) { c.SetCookie(s.cookie("", -1)) }

func (s *Sessions) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode}
}

// user reads c's session; ok is false without a valid, unexpired one.
func (s *Sessions) user(c echo.Context) (User, bool) {
	ck, err := c.Cookie(CookieName)
	if err != nil {
		return User{}, false
	}
	var ss session
	if err := s.codec.Decode(CookieName, ck.Value, &ss); err != nil || time.Now().Unix() > ss.Expires {
		return User{}, false
	}
	return ss.User, true
}

// Require lets signed-in users through and sends everyone else to the
// sign-in page (or answers 401 to a request that is not a page load).
func (s *Sessions) Require(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, ok := s.user(c)
		if !ok {
			if c.Request().Method == http.MethodGet {
				return c.Redirect(http.StatusSeeOther, "/login")
			}
			return echo.NewHTTPError(http.StatusUnauthorized, "sign in first")
		}
		c.Set(contextKey, u)
		return next(c)
	}
}

// RequireOperator refuses (403) anyone but an operator; it runs after
// Require.
func RequireOperator(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !Current(c).CanAct() {
			return echo.NewHTTPError(http.StatusForbidden, "only an operator may do this")
		}
		return next(c)
	}
}

// Current is the signed-in user of c (zero before Require).
func Current(c echo.Context) User {
	u, _ := c.Get(contextKey).(User)
	return u
}
