/**
 * The node relay: the ranks of one node connect to it as they would to the daemon, and it carries all their streams
 * on one node stream, in batches, so the daemon holds one stream per node rather than one per rank.
 */
package dev.frdiag.agent.relay;
