"""What the chapters need around the science: profiles, the run stamp, exercises, live widgets."""
