"""Calibration's writes: samples, labels, agreement, the level and the locks."""
