/**
 * What every frdiag command line shares (fr-daemon, fr-agent, fr-diagnose, fr-demo): how durations are typed and
 * how the version is told. Nothing here knows what a command does.
 */
package dev.frdiag.command;
