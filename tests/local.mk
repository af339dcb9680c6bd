# Rules for tests/.
