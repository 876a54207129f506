/**
 * What every frdiag command line shares (fr-daemon, fr-agent, fr-diagnose, fr-demo, fr-sim): how it is run (usage
 * errors, failures and their exit codes, the version: CommandRunner), how durations are typed, config files, log
 * format and the client's security options. Nothing here knows what a command does.
 */
package dev.frdiag.command;
