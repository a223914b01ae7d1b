"""BrowserGym tasks (MiniWoB++ first): a BrowserGym task id and the seeds of one split."""
