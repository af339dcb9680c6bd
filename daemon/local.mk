# Rules for daemon/.
