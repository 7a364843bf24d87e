"""Calibration's pure algorithms (no Django): drawing and assigning samples, agreement statistics."""
