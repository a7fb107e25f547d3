"""Publishing results to GitHub: REST client, PR comment / check run / status, workflow files."""
