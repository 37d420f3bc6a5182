package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"
)

// OIDCConfig is the console's OpenID Connect client: the issuer, the
// client's id and secret, where the issuer sends the browser back, and
// the (lower-case) emails that get the operator role; everyone else who
// signs in is a viewer.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret, RedirectURL string
	Operators                                   []string
}

// OIDC signs people in with an OpenID Connect provider (authorization
// code flow with state and nonce, the ID token verified by go-oidc).
type OIDC struct {
	oauth     oauth2.Config
	verifier  *oidc.IDTokenVerifier
	operators []string
	secure    bool
}

// stateCookie carries the state and nonce of a sign-in in progress.
const stateCookie = "console_oidc"

// NewOIDC discovers the issuer's endpoints and keys.
func NewOIDC(ctx context.Context, cfg OIDCConfig, secure bool) (*OIDC, error) {
	p, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc discovery at %s: %w", cfg.Issuer, err)
	}
	return &OIDC{
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
			Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}},
		verifier:  p.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		operators: cfg.Operators,
		secure:    secure,
	}, nil
}

// Start redirects the browser to the provider, remembering state and
// nonce in a short-lived HTTP-only cookie.
func (o *OIDC) Start(c echo.Context) error {
	state, nonce := random(), random()
	c.SetCookie(&http.Cookie{Name: stateCookie, Value: state + "." + nonce, Path: "/login/oidc", MaxAge: 600,
		HttpOnly: true, Secure: o.secure, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusFound, o.oauth.AuthCodeURL(state, oidc.Nonce(nonce)))
}

// Finish checks the provider's answer (state, code, ID token and nonce)
// and returns the user it signs in: an operator when the token's email is
// listed.
func (o *OIDC) Finish(c echo.Context) (User, error) {
	ck, err := c.Cookie(stateCookie)
	if err != nil {
		return User{}, errors.New("no sign-in in progress")
	}
	state, nonce, _ := strings.Cut(ck.Value, ".")
	if c.QueryParam("state") == "" || c.QueryParam("state") != state {
		return User{}, errors.New("state does not match")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 10*time.Second)
	defer cancel()
	tok, err := o.oauth.Exchange(ctx, c.QueryParam("code"))
	if err != nil {
		return User{}, fmt.Errorf("exchange code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return User{}, errors.New("no id_token in the answer")
	}
	idt, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return User{}, fmt.Errorf("verify id token: %w", err)
	}
	if idt.Nonce != nonce {
		return User{}, errors.New("nonce does not match")
	}
	var claims struct {
		Email    string `json:"email"`
		Username string `json:"preferred_username"`
	}
	if err := idt.Claims(&claims); err != nil {
		return User{}, fmt.Errorf("id token claims: %w", err)
	}
	role := Viewer
	if claims.Email != "" && slices.Contains(o.operators, strings.ToLower(claims.Email)) {
		role = Operator
	}
	// The user is named by their user name (or subject), never their
	// email: the name is recorded on every action and in the audit log.
	name := claims.Username
	if name == "" {
		name = idt.Subject
	}
	c.SetCookie(&http.Cookie{Name: stateCookie, Path: "/login/oidc", MaxAge: -1})
	return User{Name: name, Role: role}, nil
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
