"""The browser environment: Playwright, BrowserGym actions, REAL tasks."""
