# Rules for man/.
