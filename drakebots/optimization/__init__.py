"""MathematicalProgram builders: contact-implicit transcription, space-time and QPCC, planners."""
