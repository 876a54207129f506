/**
 * What a job left behind, turned into evidence: {@link dev.frdiag.evidence.EvidenceReader} reads folders of Flight
 * Recorder dumps, dump files and logs (each file's kind told by its content) into the one
 * {@link dev.frdiag.analysis.JobEvidence} the analysis takes, telling a {@link dev.frdiag.evidence.ReadProgress} as it
 * goes. The offline twin of the daemon's registry; it never prints, and never runs the analysis.
 */
package dev.frdiag.evidence;
