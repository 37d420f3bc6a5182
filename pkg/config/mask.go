package config

import (
	"net/url"
	"regexp"
	"strings"
)

// secretWords mark a variable whose whole value is a secret when its name
// ends in _<word> or holds _<word>_.
var secretWords = []string{"SECRET", "PASSWORD", "TOKEN", "KEY", "KEYS", "PK", "CK"}

// secretParams are the connection parameters that carry a secret, in a DSN's
// query (postgres://h/db?password=x) or its keyword form (host=h password=x).
var secretParams = []string{"password", "sslpassword"}

// keywordSecret matches password=value in a keyword DSN, the value bare or
// single-quoted with backslash escapes, as libpq reads it.
var keywordSecret = regexp.MustCompile(`(?i)(^|\s)(` + strings.Join(secretParams, "|") + `)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)

// urlUserinfo matches the user:password@ part of a URL that net/url refuses
// to parse, so a malformed DSN is still shown without its password.
var urlUserinfo = regexp.MustCompile(`(://[^:/@\s]*:)[^@\s]*@`)

// mask hides the values of secret-looking variables and the passwords inside
// connection strings: a URL's userinfo and query, and a keyword DSN.
func mask(key, value string) string {
	if value == "" {
		return ""
	}
	for _, w := range secretWords {
		if strings.HasSuffix(key, "_"+w) || strings.Contains(key, "_"+w+"_") {
			return "***"
		}
	}
	if strings.Contains(value, "://") {
		return maskURL(value)
	}
	return keywordSecret.ReplaceAllString(value, "${1}${2}${3}***")
}

// maskURL hides the password of a URL's userinfo and any secret query
// parameter, keeping the rest readable.
func maskURL(value string) string {
	u, err := url.Parse(value)
	if err != nil {
		return urlUserinfo.ReplaceAllString(keywordSecret.ReplaceAllString(value, "${1}${2}${3}***"), "${1}***@")
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "***")
		}
	}
	q := u.Query()
	for name := range q {
		for _, p := range secretParams {
			if strings.EqualFold(name, p) {
				q[name] = []string{"***"}
			}
		}
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", "***")
}
