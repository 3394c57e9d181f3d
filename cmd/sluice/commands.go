package main

// The command line around the subcommands: their table, the top-level
// usage, "sluice help", and the start-up checks of the environment
// (unknown SLUICE_* variables).

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is one subcommand: "sluice NAME args...".
type command struct {
	name    string
	summary string // its line in the top-level usage
	run     func(args []string, getenv func(string) string, stdout, stderr io.Writer) int
}

// commands is the table of every subcommand, in the order of the usage;
// it is the only place where subcommands are declared. (A function, not
// a variable: help's run refers to the table.)
func commands() []command {
	return []command{
		{"ask", "ask a running sluice a question and stream the answer", cmdAsk},                                             // client.go
		{"cache", "explain the cache decision for a question, print the cache counters, or evaluate pairs (eval)", cmdCache}, // client.go, cacheeval.go
		{"config", "check a configuration file of several upstreams (config check FILE)", cmdConfig},                         // routes.go
		{"help", "this help, or a command's (sluice help ask)", cmdHelp},
		{"load", "send an open-loop load and report latencies and refusals", cmdLoad},                               // load.go, internal/load
		{"sim-upstream", "serve the simulated model as an OpenAI-compatible upstream (benchmarks)", cmdSimUpstream}, // simupstream.go
		{"task", "follow (or --poll) a task by its id", cmdTask},                                                    // client.go
	}
}

// findCommand returns the subcommand called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// commandNames are the subcommands, in the order of the table.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// topUsage is the first part of "sluice -h" and "sluice help": how to
// serve, and every subcommand.
func topUsage() string {
	var b strings.Builder
	b.WriteString("usage: sluice [flags]            serve (settings: flags or SLUICE_* variables)\n" +
		"       sluice COMMAND [flags] ...  a client of a running sluice (SLUICE_SERVER, SLUICE_API_KEY)\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString("\n")
	return b.String()
}

// cmdHelp is "sluice help [COMMAND]": the usage on stdout, exit 0.
func cmdHelp(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0 || args[0] == "serve":
		fmt.Fprint(stdout, topUsage())
		printSettingFlags(stdout, (&settings{}).table())
		return exitOK
	case len(args) > 1:
		return fail(stderr, "help takes one command (%s)", strings.Join(commandNames(), ", "))
	}
	cmd, ok := findCommand(args[0])
	if !ok || args[0] == "help" {
		if args[0] == "help" {
			fmt.Fprint(stdout, topUsage())
			return exitOK
		}
		return fail(stderr, "no command %q (%s)", args[0], strings.Join(commandNames(), ", "))
	}
	// A command prints its usage on its stderr for -h: here that is stdout.
	return cmd.run([]string{"-h"}, getenv, stdout, stdout)
}

// unknownVar is a SLUICE_* variable that is no setting, and the setting
// it most resembles.
type unknownVar struct{ Name, Closest string }

// clientAndTestVars are SLUICE_* variables read by other things than the
// server: the client commands, and the tests (SLUICE_TEST_* and
// SLUICE_E2E_* too).
var clientAndTestVars = []string{"SLUICE_SERVER", "SLUICE_API_KEY", "SLUICE_UPDATE_DOCS", "SLUICE_ARTIFACTS",
	"SLUICE_REQUIRE_E2E", "SLUICE_CACHE_PAIRS", "SLUICE_SOAK"}

// unknownSettings returns the variables of environ (NAME=value lines)
// that start with SLUICE_ but are no setting of the table, each with the
// closest known name. The known names come from the settings table, so a
// setting added there is known here.
func unknownSettings(environ []string) []unknownVar {
	known := map[string]bool{}
	var names []string
	for _, st := range (&settings{}).table() {
		known[st.env] = true
		names = append(names, st.env)
	}
	for _, n := range clientAndTestVars {
		known[n] = true
	}
	var out []unknownVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "SLUICE_") || known[name] || strings.HasPrefix(name, "SLUICE_TEST_") || strings.HasPrefix(name, "SLUICE_E2E_") {
			continue
		}
		near, _ := closest(name, names)
		out = append(out, unknownVar{Name: name, Closest: near})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// closest returns the candidate with the least edit distance to s (the
// first of equals) and that distance.
func closest(s string, candidates []string) (string, int) {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD
}

// editDistance is the Levenshtein distance of a and b, in bytes (setting
// and command names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
