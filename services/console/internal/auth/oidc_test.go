package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/services/console/internal/auth"
)

// provider is a minimal OpenID Connect provider: discovery, keys, an
// authorization endpoint that signs in whoever it is told to at once, and
// a token endpoint answering an ID token signed with key.
type provider struct {
	srv   *httptest.Server
	key   *rsa.PrivateKey // the key it advertises
	signs *rsa.PrivateKey // the key it signs with (another one: a forged token)
	email string
	nonce string
}

func newProvider(t *testing.T, email string) *provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{key: key, signs: key, email: email}
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": p.srv.URL, "authorization_endpoint": p.srv.URL + "/auth",
			"token_endpoint": p.srv.URL + "/token", "jwks_uri": p.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /auth", func(w http.ResponseWriter, r *http.Request) {
		p.nonce = r.URL.Query().Get("nonce")
		back := r.URL.Query().Get("redirect_uri") + "?code=the-code&state=" + url.QueryEscape(r.URL.Query().Get("state"))
		http.Redirect(w, r, back, http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "id_token": p.idToken(t)})
	})
	return p
}

func (p *provider) idToken(t *testing.T) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.signs}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Error(err)
		return ""
	}
	claims := map[string]any{"iss": p.srv.URL, "aud": "console", "sub": "user-42", "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix(), "nonce": p.nonce, "email": p.email, "preferred_username": "ana"}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Error(err)
	}
	return tok
}

// signInThrough runs the console's OIDC routes against p and returns the
// status of the callback and the user it signed in.
func signInThrough(t *testing.T, p *provider, operators []string) (int, string) {
	t.Helper()
	console := httptest.NewServer(nil)
	t.Cleanup(console.Close)
	o, err := auth.NewOIDC(context.Background(), auth.OIDCConfig{Issuer: p.srv.URL, ClientID: "console", ClientSecret: "s",
		RedirectURL: console.URL + "/login/oidc/callback", Operators: operators}, false)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.GET("/login/oidc", o.Start)
	e.GET("/login/oidc/callback", func(c echo.Context) error {
		u, err := o.Finish(c)
		if err != nil {
			return c.String(http.StatusUnauthorized, err.Error())
		}
		return c.String(http.StatusOK, u.Name+" "+u.Role)
	})
	console.Config.Handler = e
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(console.URL + "/login/oidc")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "Ana@Example.com")
	if code, got := signInThrough(t, p, []string{"ana@example.com"}); code != http.StatusOK || got != "ana operator" {
		t.Errorf("listed operator: %d %q, want 200 \"ana operator\"", code, got)
	}
	if code, got := signInThrough(t, p, []string{"bo@example.com"}); code != http.StatusOK || got != "ana viewer" {
		t.Errorf("unlisted user: %d %q, want 200 \"ana viewer\"", code, got)
	}
}

func TestOIDCRefusesAForgedToken(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "ana@example.com")
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.signs = other
	if code, got := signInThrough(t, p, nil); code != http.StatusUnauthorized || !strings.Contains(got, "verify id token") {
		t.Errorf("token signed with another key: %d %q, want 401 naming the verification", code, got)
	}
}
