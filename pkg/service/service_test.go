package service_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/service"
)

type testConfig struct {
	config.Common
	Workers int `env:"TEST_WORKERS" renamed:"WORKERS" envDefault:"2"`
}

type testApp struct {
	cfg testConfig
	log *zap.Logger
	ran *testConfig
}

func (a testApp) Run(context.Context) error {
	a.log.Info("running")
	*a.ran = a.cfg
	return nil
}

func spec(ran *testConfig) service.Spec[testConfig, testApp] {
	return service.Spec[testConfig, testApp]{
		Name: "test", Schema: "test",
		New: func(_ context.Context, cfg testConfig, log *zap.Logger) (testApp, error) {
			return testApp{cfg: cfg, log: log, ran: ran}, nil
		},
		Commands: map[string]service.Command{
			"hello": func(_ context.Context, getenv config.Getenv, args []string, stdout io.Writer) error {
				_, err := io.WriteString(stdout, strings.Join(append([]string{"hello " + getenv("WHO")}, args...), " "))
				return err
			},
		},
	}
}

func getenv(env map[string]string) config.Getenv { return func(k string) string { return env[k] } }

func TestServeBuildsTheAppFromGetenvAndLogsToStdout(t *testing.T) {
	t.Parallel()
	var ran testConfig
	var out bytes.Buffer
	env := getenv(map[string]string{"WORKERS": "5", "ADMIN_TOKEN": "hunter2"})
	if err := service.Main(context.Background(), spec(&ran), env, nil, &out); err != nil {
		t.Fatal(err)
	}
	if ran.Workers != 5 || ran.AdminToken != "hunter2" {
		t.Fatalf("app ran with %+v, want the settings getenv gave", ran)
	}
	logs := out.String()
	for _, want := range []string{`"logger":"test"`, `"msg":"running"`, `"old":"WORKERS"`, `"new":"TEST_WORKERS"`, `"ADMIN_TOKEN":"***"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("stdout lacks %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "hunter2") {
		t.Errorf("stdout shows the admin token:\n%s", logs)
	}
}

func TestServeNamesABadVariable(t *testing.T) {
	t.Parallel()
	var ran testConfig
	err := service.Main(context.Background(), spec(&ran), getenv(map[string]string{"TEST_WORKERS": "many"}), []string{"serve"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "TEST_WORKERS") {
		t.Fatalf("error %v, want one naming TEST_WORKERS", err)
	}
}

func TestExtraCommandsGetTheSameEnvironment(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := service.Main(context.Background(), spec(nil), getenv(map[string]string{"WHO": "ops"}), []string{"hello"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello ops" {
		t.Fatalf("hello wrote %q", out.String())
	}
}

func TestExtraCommandsGetTheirArguments(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := service.Main(context.Background(), spec(nil), getenv(map[string]string{"WHO": "ops"}), []string{"hello", "--loud", "twice"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello ops --loud twice" {
		t.Fatalf("hello wrote %q, want its arguments after the greeting", out.String())
	}
}

func TestUnknownSubcommandListsTheKnownOnes(t *testing.T) {
	t.Parallel()
	err := service.Main(context.Background(), spec(nil), getenv(nil), []string{"serev"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "migrate") || !strings.Contains(err.Error(), "hello") {
		t.Fatalf("error %v, want the known subcommands listed", err)
	}
}

func TestHealthcheckProbesTheAddressGetenvGives(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := service.Main(context.Background(), spec(nil), getenv(map[string]string{"HTTP_ADDR": addr}), []string{"healthcheck"}, io.Discard); err != nil {
		t.Fatalf("healthcheck of a healthy server at %s: %v", addr, err)
	}
	srv.Close()
	if err := service.Main(context.Background(), spec(nil), getenv(map[string]string{"HTTP_ADDR": addr}), []string{"healthcheck"}, io.Discard); err == nil {
		t.Fatal("healthcheck of a closed server succeeded")
	}
}
