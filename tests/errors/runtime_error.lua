-- expect: boom
-- A plain error() must reach the user with its message and status 1.
error("boom")
