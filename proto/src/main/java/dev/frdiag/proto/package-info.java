/**
 * The wire contract between frdiag's parts: the generated frdiag.v1 messages and services, CommsId (the identity
 * of one operation, the same on every rank), the daemon's default port and the job-id rule (Contract) and the
 * build version. It depends on nothing else of frdiag, and nothing here may change what an existing field means.
 */
package dev.frdiag.proto;
