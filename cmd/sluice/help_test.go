package main

import (
	"strings"
	"testing"
)

// TestHelpListsEveryCommand: "sluice help" (and -h) lists every
// subcommand and the serve flags with their types, without backticks.
func TestHelpListsEveryCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "http://127.0.0.1:1", "help")
	if code != exitOK || errOut != "" {
		t.Fatalf("help: exit %d, stderr %q", code, errOut)
	}
	for _, name := range append(commandNames(), "load", "ask", "task", "cache") {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("help does not list %q:\n%s", name, out)
		}
	}
	for _, want := range []string{"-budget int\n", "-total-timeout duration\n", "-cache-threshold float\n",
		"-conn-buffer size\n", "-upstream string\n", "-log-prompts\n", "SLUICE_MODEL"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out, " value\n") || strings.Contains(out, "`") {
		t.Errorf("help shows a bare 'value' type or backticks:\n%s", out)
	}
	var serveHelp strings.Builder
	if code := run([]string{"-h"}, env(), &serveHelp, &serveHelp); code != 0 {
		t.Errorf("-h: exit %d", code)
	}
	for _, name := range commandNames() {
		if code, out, _ := runCLI(t, "http://127.0.0.1:1", "help", name); code != exitOK || !strings.Contains(out, "usage: sluice") {
			t.Errorf("help %s: exit %d %q", name, code, out)
		}
	}
	if code, _, errOut := runCLI(t, "http://127.0.0.1:1", "help", "nope"); code != exitFailed || !strings.Contains(errOut, "ask") {
		t.Errorf("help nope: exit %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "http://127.0.0.1:1", "aks", "q")
	if code != 2 || !strings.Contains(errOut, `did you mean "ask"`) {
		t.Errorf("aks: exit %d %q", code, errOut)
	}
}

// TestBoolSettingFlagsNeedNoValue: -log-prompts alone means true, as
// with any Go boolean flag; -log-prompts=false still works.
func TestBoolSettingFlagsNeedNoValue(t *testing.T) {
	s, err := loadSettings([]string{"-log-prompts", "-budget", "3"}, env())
	if err != nil || !s.LogPrompts || s.Budget != 3 {
		t.Fatalf("-log-prompts: %v %+v", err, s)
	}
	s, err = loadSettings([]string{"-log-prompts=false"}, env("SLUICE_LOG_PROMPTS", "true"))
	if err != nil || s.LogPrompts {
		t.Fatalf("-log-prompts=false: %v", err)
	}
	if !s.given["SLUICE_LOG_PROMPTS"] || s.given["SLUICE_MODEL"] {
		t.Errorf("given %v", s.given)
	}
}
