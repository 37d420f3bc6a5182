package app

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/config"
)

func TestConfigDefaultsAndErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) error {
		_, err := config.LoadFrom[Config](func(k string) string { return env[k] })
		return err
	}
	if err := load(map[string]string{"CONSOLE_USERS_FILE": "/etc/users"}); err != nil {
		t.Fatalf("defaults with a users file: %v", err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "CONSOLE_USERS_FILE"},
		{map[string]string{"CONSOLE_USERS_FILE": "u", "CONSOLE_INVOICER_ADMIN_URL": "invoicer:8080"}, "CONSOLE_INVOICER_ADMIN_URL"},
		{map[string]string{"CONSOLE_USERS_FILE": "u", "CONSOLE_SESSION_KEY": "short"}, "CONSOLE_SESSION_KEY"},
		{map[string]string{"CONSOLE_USERS_FILE": "u", "CONSOLE_REFRESH": "10ms"}, "CONSOLE_REFRESH"},
		{map[string]string{"CONSOLE_USERS_FILE": "u", "CONSOLE_QUEUES": " , "}, "CONSOLE_QUEUES"},
		{map[string]string{"CONSOLE_USERS_FILE": "u", "CONSOLE_TRACE_URL": "http://jaeger/trace"}, "CONSOLE_TRACE_URL"},
		{map[string]string{"CONSOLE_OIDC_ISSUER": "https://idp"}, "CONSOLE_OIDC_CLIENT_ID"},
	} {
		if err := load(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.want)
		}
	}
}
