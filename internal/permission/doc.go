// Package permission decides whether a tool call may run: modes, allow /
// ask / deny rules in Claude Code's syntax, shell-aware matching of Bash
// commands, path rules with symlinks resolved, the [Asker] seam for calls
// the policy leaves open, and the ceiling a child agent runs under.
//
// A [Checker] is built from a [Policy] (mode, rules from every source,
// working directories) and an [Asker]. [Checker.Check] returns Allow or
// Deny with the reason and the rule that decided; [Checker.Evaluate] previews
// without asking. The order, for every layer of a policy:
//
//  1. a deny rule covering any part of the call denies;
//  2. plan mode asks for what is not read-only (reason type "mode"; headless: denied)
//     and for the plan-exit tool, whose approval ends the plan;
//  3. an ask rule covering any part asks (in bypassPermissions too), as does a command
//     whose files keel cannot resolve while Read or Edit rules restrict files;
//  4. allow rules covering every part allow;
//  5. otherwise the mode decides, and dontAsk turns an ask into a deny.
//
// PERMISSIONS.md beside this file documents the rule syntax, the mode
// table, the shell rules and the child ceiling.
package permission
