/* The book's stand-in for the theme's Font Awesome script (Font Awesome's
   whole SVG library, 1.5 MB). The theme's stylesheet draws every icon from the
   webfonts beside it, which scripts/vendor_icons.py cuts down to the icons the
   book uses. */
