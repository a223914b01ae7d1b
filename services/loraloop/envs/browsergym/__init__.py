"""The browsergym kind: any BrowserGym task (MiniWoB++ first) in loraloop's Playwright env."""
