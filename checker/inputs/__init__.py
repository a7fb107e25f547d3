"""Read inputs: discover eval files, load them (ADK's formats), criteria, recorded runs, bounded JSON."""
