"""Presenting results: terminal tables now; plots and the HTML report later."""
