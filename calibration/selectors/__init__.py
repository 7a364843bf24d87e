"""What the rest of the app asks calibration, and calibration's own reads, one module per subject.

judgeapp reads calibration only here: the gate (`status.calibration_for_gate`), a run's agreement and corrected
figures (`agreement.agreement_reads_for_run`, `agreement.one_snapshot`, `corrected.corrected_for_run`), the warnings
before a run starts (`status.preflight_for_run`), the judges' statuses, locks and check-ups for the web shell, and
the prompt or candidate a lead adopted (`candidates`). judgeapp's data is read only through
`judgeapp.judging.selectors`.
"""
